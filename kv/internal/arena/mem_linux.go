package arena

import "syscall"

const mapNoReserve = syscall.MAP_NORESERVE
