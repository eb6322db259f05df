/**
 * Port: the devices that sent telemetry while marked offline, told once the flush that stored it
 * committed and before its requests are answered. Implemented by the devices module, which owns
 * "offline": it clears the mark and records device.online with its dispatch job in one
 * transaction, so of several flushes for one device only the first that gets there records it.
 */
export abstract class DeviceReturns {
  abstract backOnline(deviceIds: string[], at: Date): Promise<void>;
}
