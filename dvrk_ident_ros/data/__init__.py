"""Recordings: loaders (WPI CSV, CSV/NPZ; bags later), filtering, differentiation."""
