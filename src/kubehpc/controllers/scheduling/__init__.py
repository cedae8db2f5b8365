"""Pieces of the scheduling loop: cache, informers, appliers, pod priority admission."""
