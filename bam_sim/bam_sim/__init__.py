"""Servo actuator models and simulators of BAM for ROS 2."""
