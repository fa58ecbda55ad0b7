"""nlsim: near-duplicate and related news items, for newsrooms.

The library behind the Prefect flows in ``flows/``. It never imports prefect, so every stage can be used
and tested on its own::

    >>> from nlsim.conversion import convert
    >>> convert(["軟體更新"], "tw2sp")
    ['软件更新']
"""

__version__ = "0.1.0"
