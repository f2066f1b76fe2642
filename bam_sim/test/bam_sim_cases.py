"""Cases shared by the bam_sim tests (a plain module: test files import it)."""

ACTUATORS = ("mx64", "mx106", "xl320", "xl330", "erob80_50", "erob80_100")
MODELS = ("m1", "m2", "m3", "m4", "m5", "m6")
SEED = 20261121
