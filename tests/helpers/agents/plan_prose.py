"""A plan agent that answers in prose instead of the schema."""
print("I looked at the code and I think everything is basically fine!")
