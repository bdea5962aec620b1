"""authgate as the OpenID Provider of applications (clients): its records, requests and rules."""
