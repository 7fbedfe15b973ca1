"""What the protocol tests compare between our message declarations and upstream's."""
from __future__ import annotations


def fields(descriptor) -> dict:
    """Each field of a message descriptor: name -> (number, type, repeated, message or enum type)."""
    return {f.name: (f.number, f.type, f.is_repeated,
                     (f.message_type or f.enum_type).full_name if (f.message_type or f.enum_type) else None)
            for f in descriptor.fields}
