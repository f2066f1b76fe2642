"""EtherCAT for the eRob drives: protocol pieces shared by the driver and the emulator.

:mod:`.frames` (datagrams, ETG.1000.4), :mod:`.registers` (ESC registers, AL
states, SII EEPROM), :mod:`.coe` (mailbox, CoE SDO and EMCY, ETG.1000.6),
:mod:`.cia402` (drive state machine, CiA 402), :mod:`.drive_models` (the eRob
models as data); the master over pysoem (:mod:`.master`) and its ROS-free
supervisor (:mod:`.supervisor`).
"""
