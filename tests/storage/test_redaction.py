"""Every credential form of a PostgreSQL URL is hidden in what the service prints."""

from __future__ import annotations

import pytest

from authgate.adapters.postgres import redact


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:SECRET@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgresql://:SECRET@h/db", "postgresql://:***@h/db"),
        ("postgresql://u:SE@CRET@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u@h/db?password=SECRET", "postgresql://u@h/db?password=***"),
        (
            "postgresql://u@h/db?sslmode=require&sslpassword=SECRET&application_name=a",
            "postgresql://u@h/db?sslmode=require&sslpassword=***&application_name=a",
        ),
        ("postgresql://u@h/db?PASSWORD=SECRET", "postgresql://u@h/db?PASSWORD=***"),
        ("postgresql://u@h/db?pass%77ord=SECRET", "postgresql://u@h/db?pass%77ord=***"),
        (
            "postgresql://u@h/db?api_token=SECRET&x_secret=SECRET",
            "postgresql://u@h/db?api_token=***&x_secret=***",
        ),
        ("postgresql://u:SECRET@h1:5432,h2:5433/db", "postgresql://u:***@h1:5432,h2:5433/db"),
        ("postgresql://u:SECRET@h:port/db", "postgresql://u:***@h:port/db"),
        ("postgresql://u:SECRET@[::1/db", "postgresql://*** (malformed URL)"),
        ("postgresql://u@h/db#SECRET", "postgresql://u@h/db#***"),
        ("postgresql://u@[::1]:5432/db", "postgresql://u@[::1]:5432/db"),
        ("postgresql://u@h/db?sslmode=require", "postgresql://u@h/db?sslmode=require"),
    ],
)
def test_redact(url: str, shown: str) -> None:
    assert redact(url) == shown
    assert "SECRET" not in redact(url)
