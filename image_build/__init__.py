"""Build the serving image on a laptop or CI box: start a container engine when none runs,
make missing base images locally, pass the machine's pip settings to the build as secrets.

Nothing here ships in the image.
"""
