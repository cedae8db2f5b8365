"""One adapter module per job kind Kueue manages (batch/v1 Job so far)."""
