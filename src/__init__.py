"""authgate, the sign-in service."""

# The release, as pyproject.toml's [project] version (tests/unit/test_version.py keeps the two
# equal): the OpenAPI document reads it here, because importlib.metadata would load about 20
# modules (email, zipfile, csv...) into the service for this one string.
__version__ = "0.1.0"
