"""The interfaces the domain needs (typing.Protocol); adapters implement them."""
