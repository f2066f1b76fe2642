import os
from glob import glob

from setuptools import find_packages, setup

# bam_sim's build-time helper: its own source here, its install for the other packages.
from bam_sim.packaging import direct_scripts

package_name = 'bam_identify'
SCRIPTS = [
    'fit = bam_identify.executables:fit',
    'eval = bam_identify.executables:eval',
    'recover = bam_identify.executables:recover',
    'campaign = bam_identify.executables:campaign',
    'export = bam_identify.executables:export',
    'trajectory = bam_identify.executables:trajectory',
    'recorder = bam_identify.executables:recorder',
]


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        (os.path.join('share', package_name, 'config'), glob('config/*.yaml')),
    ],
    install_requires=['setuptools', 'numpy', 'numba', 'pyyaml', 'matplotlib', 'optuna',
                      'cmaes', 'tqdm', 'rosbags'],
    zip_safe=True,
    maintainer='BAM for ROS 2 maintainers',
    maintainer_email='bam@example.com',
    description='Identification of servo actuator friction models from bench recordings',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={'console_scripts': SCRIPTS},
    cmdclass=direct_scripts(SCRIPTS),
)
