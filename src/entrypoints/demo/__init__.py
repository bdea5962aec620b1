"""The demo page (``/demo``, development only) and the API documentation page (``/docs``):
plain HTML, CSS and JavaScript served from files inside this package, no build step."""

from authgate.entrypoints.demo.docs import mount_docs
from authgate.entrypoints.demo.site import DEMO_PATH, demo_settings, mount_demo

__all__ = ["DEMO_PATH", "demo_settings", "mount_demo", "mount_docs"]
