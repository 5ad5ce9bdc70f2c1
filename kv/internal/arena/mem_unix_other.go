//go:build unix && !linux

package arena

const mapNoReserve = 0
