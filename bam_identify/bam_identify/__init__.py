"""Identification of servo actuator friction models from bench recordings."""
