"""Slurm front end: sbatch scripts, Slurm's views and slurm.conf import, as pure translation.

Everything in this package except :mod:`kubehpc.slurm.jobids` is pure (text and objects in,
objects and text out); the ``kubehpc sbatch|squeue|...`` verbs in ``kubehpc.cli.slurm_*`` do
the I/O.
"""
