"""Excitation: Fourier trajectories (Wang 2019 section IV) and MLSE pose grids (Lin 2019)."""
