"""MuJoCo's DC-motor model and its composition with the servo laws."""
