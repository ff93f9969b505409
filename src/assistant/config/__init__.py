"""Configuration: every setting declared once, the environment read in one place."""
