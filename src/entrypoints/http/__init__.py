"""The sign-in application's HTTP operations (thin: they translate to and from the domain)."""
