from setuptools import find_packages, setup

# bam_sim's build-time helper: its own source here, its install for the other packages.
from bam_sim.packaging import direct_scripts

package_name = 'bam_drivers'
SCRIPTS = [
    'dynamixel = bam_drivers.executables:dynamixel',
    'serial_servo_emulator = bam_drivers.executables:serial_servo_emulator',
    'feetech = bam_drivers.executables:feetech',
    'erob = bam_drivers.executables:erob',
    'ethercat_emulator = bam_drivers.executables:ethercat_emulator',
]


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools', 'numpy', 'dynamixel-sdk',
                      'feetech-servo-sdk', 'pyserial', 'pysoem', 'pyroute2'],
    zip_safe=True,
    maintainer='BAM for ROS 2 maintainers',
    maintainer_email='bam@example.com',
    description='Hardware nodes for servo actuator benches and their emulators',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={'console_scripts': SCRIPTS},
    cmdclass=direct_scripts(SCRIPTS),
)
