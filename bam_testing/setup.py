from setuptools import find_packages, setup

package_name = 'bam_testing'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools', 'pytest', 'hypothesis'],
    zip_safe=True,
    maintainer='BAM for ROS 2 maintainers',
    maintainer_email='bam@example.com',
    description='Test support of the BAM packages (a test dependency, not installed on a robot)',
    license='Apache-2.0',
)
