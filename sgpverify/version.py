"""The version of sgpverify (a leaf module: every other module may import it)."""

__version__ = "0.1.0"
