"""MTM gravity compensation: the 40-parameter model of the dVRK gc file, MLSE
estimation (Lin 2019), the compensation law, gc JSON read/write."""
