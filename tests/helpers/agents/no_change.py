"""Changes nothing and claims success."""
print("I have implemented the requirement. SUCCESS: all tests pass.")
