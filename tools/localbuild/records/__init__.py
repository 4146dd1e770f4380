"""What every part of build-locally shares: the configs it may build, build_artifacts/'s
layout, the provenance a build records and the CI engine's record."""
