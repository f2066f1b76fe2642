"""Hardware drivers of the servo actuator benches, and their emulators."""
