import os
from glob import glob

from setuptools import find_packages, setup

# bam_sim's build-time helper: its own source here, its install for the other packages.
from bam_sim.packaging import direct_scripts

package_name = 'bam_sim'
SCRIPTS = [
    'simulate = bam_sim.executables:simulate',
    'pendulum = bam_sim.executables:pendulum',
    'arm = bam_sim.executables:arm',
    'monitor = bam_sim.executables:monitor',
]


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    # parameter sets and actuator files shipped inside the module, read with importlib.resources
    package_data={package_name + '.models.files': ['published/*.yaml'],
                  package_name + '.models.servo': ['shipped/*.yaml']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        (os.path.join('share', package_name, 'config'), glob('config/*.yaml')),
        (os.path.join('share', package_name, 'mjcf'), glob('mjcf/*.xml')),
    ],
    install_requires=['setuptools', 'numpy', 'numba', 'pyyaml', 'matplotlib', 'mujoco'],
    zip_safe=True,
    maintainer='BAM for ROS 2 maintainers',
    maintainer_email='bam@example.com',
    description='Servo actuator models, pendulum and arm simulators, simulation nodes',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={'console_scripts': SCRIPTS},
    cmdclass=direct_scripts(SCRIPTS),
)
