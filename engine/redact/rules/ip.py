"""`ipv4` and `ipv6`: IP addresses, validated by the standard library's `ipaddress`.

IPv4 is four dotted decimals not embedded in a longer dotted/word run (`v1.2.3.4` and `1.2.3.4.5` are
not addresses; `1.2.3.4` is, whatever it means to its writer). `ipaddress` rejects octets over 255 and
leading zeros. IPv6 candidates are hex groups and colons (optionally ending in a dotted IPv4 part and
a `%zone`) that `ipaddress.IPv6Address` accepts; times (`10:30:45`) and MAC addresses fail that test.
Both share the `IP` placeholder stem; the key is the canonical (compressed) form.
"""

from __future__ import annotations

import ipaddress
import re

from engine.redact.base import Detection

_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w])(?!\.\w)")
_IPV6 = re.compile(
    r"(?<![\w:.])"
    r"(?=[0-9A-Fa-f:.]*[0-9A-Fa-f])"  # at least one hex digit: a bare "::" is not reported
    r"(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})"
    r"(?:%[0-9A-Za-z]+)?"
    r"(?![\w:])"
)


class Ipv4Rule:
    name = "ipv4"
    label = "IP"

    def detect(self, text: str) -> list[Detection]:
        found: list[Detection] = []
        for m in _IPV4.finditer(text):
            try:
                address = ipaddress.IPv4Address(m.group(0))
            except ValueError:
                continue
            found.append(
                Detection(rule=self.name, start=m.start(), end=m.end(), value=m.group(0), key=str(address))
            )
        return found


class Ipv6Rule:
    name = "ipv6"
    label = "IP"

    def detect(self, text: str) -> list[Detection]:
        found: list[Detection] = []
        for m in _IPV6.finditer(text):
            try:
                address = ipaddress.IPv6Address(m.group(0))
            except ValueError:
                continue
            found.append(
                Detection(rule=self.name, start=m.start(), end=m.end(), value=m.group(0), key=str(address))
            )
        return found
