"""What every face's HTTP handlers share: errors, bodies, the caller, the look, documentation."""
