from .api import freeze_time as freeze_time

