"""evalkit: measure retrieval over folders of PDFs."""
__version__ = "0.1.0"
