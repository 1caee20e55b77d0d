# `make lab`: JupyterLab on this folder, opening the jupytext .py notebooks as notebooks.
import os

here = os.path.dirname(os.path.abspath(__file__))
c = get_config()  # type: ignore[name-defined]  # noqa: F821
c.ServerApp.root_dir = here
c.ServerApp.open_browser = False
c.LabApp.app_settings_dir = os.path.join(here, ".lab-settings")  # overrides.json: .py -> Jupytext Notebook
