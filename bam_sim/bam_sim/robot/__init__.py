"""A robot: any MuJoCo model whose actuated joints are servos (joint map, rollouts)."""
