"""The names of the retrieval presets and the channel weights a response reports (defined with every
other retrieval default in `loci.wire.tuning`)."""

from loci.wire.tuning import PresetName as PresetName
from loci.wire.tuning import Weights as Weights
