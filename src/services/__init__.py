"""The service layer: one use-case service per concept (sign-in, the account), each
orchestrating the ports and raising the domain's errors. Entrypoints call services; services
call ports; the domain below them is pure."""
