"""The device stage's analyses: resources, occupancy, PTX/SASS line records."""
