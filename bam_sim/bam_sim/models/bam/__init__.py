"""The BAM paper's friction models M1..M6 (Table II)."""
