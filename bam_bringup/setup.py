import os
from glob import glob

from setuptools import find_packages, setup

# bam_sim's build-time helper: its own source here, its install for the other packages.
from bam_sim.packaging import direct_scripts

package_name = 'bam_bringup'
SCRIPTS = [
    'bench = bam_bringup.executables:bench',
]


def data(pattern):
    # Existing files only: a symlink install keeps links to files removed since.
    return [path for path in glob(pattern) if os.path.isfile(path)]


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        (os.path.join('share', package_name, 'launch'), data('launch/*.launch.py')),
        (os.path.join('share', package_name, 'config'), data('config/*.yaml')),
        (os.path.join('share', package_name, 'urdf'), data('urdf/*.urdf')),
    ],
    install_requires=['setuptools', 'pyyaml', 'tqdm'],
    zip_safe=True,
    maintainer='BAM for ROS 2 maintainers',
    maintainer_email='bam@example.com',
    description='Launch files and bench configurations of BAM for ROS 2',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={'console_scripts': SCRIPTS},
    cmdclass=direct_scripts(SCRIPTS),
)
