"""Labs: bringing a topology up as libvirt guests over nbdkit devices, their state, the guest appliance and storage profiles, and taking them down."""
