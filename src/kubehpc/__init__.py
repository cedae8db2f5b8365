"""kubehpc: HPC and AI batch scheduling the Kubernetes way."""

__version__ = "0.1.0"
