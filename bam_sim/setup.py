import os
from glob import glob

from setuptools import find_packages, setup
from setuptools.command.develop import develop
from setuptools.command.install_scripts import install_scripts

package_name = 'bam_sim'
SCRIPTS = [
    'simulate = bam_sim.executables:simulate',
    'pendulum = bam_sim.executables:pendulum',
    'arm = bam_sim.executables:arm',
    'monitor = bam_sim.executables:monitor',
]


def direct_scripts(scripts):
    """setuptools' commands writing each console script as a direct call of its entry point.
    The script setuptools writes first looks the entry point up in the metadata of every
    installed package (0.1 to 0.2 s) with Python's SIGINT handler in place: Ctrl-C then
    printed a KeyboardInterrupt traceback (docs/troubleshooting.md)."""
    targets = dict(script.split(' = ') for script in scripts)

    def direct(command):
        def write_script(self, name, contents, *args):
            if name in targets:
                module, _, attribute = targets[name].partition(':')
                contents = (contents.splitlines()[0] + f'\nimport sys\nfrom {module} import '
                            f'{attribute}\nsys.exit({attribute}())\n')
            command.write_script(self, name, contents, *args)
        return type(command.__name__, (command,), {'write_script': write_script})

    return {'develop': direct(develop), 'install_scripts': direct(install_scripts)}


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    # parameter sets shipped inside the module, read with importlib.resources
    package_data={package_name + '.models.files': ['published/*.yaml']},
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
