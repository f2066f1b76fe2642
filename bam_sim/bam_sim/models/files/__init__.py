"""Parameter files: ROS 2 YAML, BAM JSON, the published sets."""
