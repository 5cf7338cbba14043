"""The file layer: the memory file format and its atomic writes, file names
from scopes and titles, private modes, inter-process locks, and the temp
files a killed writer leaves. See docs/design.md."""
