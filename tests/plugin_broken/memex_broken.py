"""Plug-ins broken in every way memex must survive (tests/test_plugins.py)."""


class NoRead:
    description = "an import format without read()"


class Sneaky:
    description = "an import format whose detect() fails"

    def detect(self, source):
        raise KeyError("sneaky looked at the wrong thing")

    def read(self, source):
        raise KeyError("sneaky read the wrong thing")


def failing_model():
    raise RuntimeError("the toy weights are gone")


def shapeless_model():
    return object()


class Grumpy:
    description = "an agent whose every step fails"

    def install(self, setup):
        raise OSError("grumpy cannot write its settings")

    def uninstall(self, setup):
        return "not a dict"

    def handle(self, vault, event):
        raise ValueError("grumpy will not answer")


no_read, sneaky, grumpy = NoRead(), Sneaky(), Grumpy()
