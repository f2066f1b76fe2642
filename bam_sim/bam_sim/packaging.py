"""Build-time help of the workspace's Python packages (their setup.py), not used at run time.

:func:`direct_scripts` makes setuptools write each console script as a direct call of its
entry point. The script setuptools writes by default first looks the entry point up in
the metadata of every installed package (0.1 to 0.2 s) with Python's SIGINT handler in
place: Ctrl-C then printed a KeyboardInterrupt traceback (docs/troubleshooting.md).
"""

from setuptools.command.develop import develop
from setuptools.command.install_scripts import install_scripts


def direct_scripts(scripts: list[str]) -> dict[str, type]:
    """The ``cmdclass`` of a setup() whose ``console_scripts`` are ``scripts``
    (``name = module:function`` each)."""
    targets = dict(script.split(' = ') for script in scripts)

    def direct(command: type) -> type:
        def write_script(self, name, contents, *args):
            if name in targets:
                module, _, attribute = targets[name].partition(':')
                contents = (contents.splitlines()[0] + f'\nimport sys\nfrom {module} import '
                            f'{attribute}\nsys.exit({attribute}())\n')
            command.write_script(self, name, contents, *args)
        return type(command.__name__, (command,), {'write_script': write_script})

    return {'develop': direct(develop), 'install_scripts': direct(install_scripts)}
