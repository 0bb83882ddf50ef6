"""Thinks for a second and a half, changes nothing."""
import time

time.sleep(1.5)
print("still thinking")
