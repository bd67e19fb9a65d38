"""Model APIs: one module per API pi 0.80.2 speaks, behind the interface of ``base``."""
