"""The package's version, in a module of its own so that modules recording it (a manifest, a verdict, the
machine's environment) import it without importing the package's front door."""

__version__ = "0.1.0"
