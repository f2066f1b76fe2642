"""The servos: actuator records and their control laws."""
