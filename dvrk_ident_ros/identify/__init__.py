"""Identification: OLS, WLS and the physically consistent SDP (Wang 2019 sections V-VI)."""
