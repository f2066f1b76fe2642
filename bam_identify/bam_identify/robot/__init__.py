"""Identification of the servos of a whole robot from its own recordings."""
