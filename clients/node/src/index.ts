export { Mutex } from './mutex';
export type { MutexOptions } from './mutex';
export { MultiLock } from './multilock';
export type { MultiLockOptions } from './multilock';
export { Semaphore } from './semaphore';
export { MultiSemaphore } from './multisemaphore';
export { RedlockMutex, RedlockSemaphore, RedlockMultiSemaphore } from './quorumlock';
export { ReadWriteLock, RWSide } from './rwlock';
export { CountDownLatch } from './latch';
export { Redlock, RedlockLock } from './redlock';
export { quorumRound, quorumSize } from './quorum';
export type { ExecutionStats, ExecutionResult, Round } from './quorum';
export { Election } from './election';
export type { ElectionOptions, CampaignOptions } from './election';
export { LeaderObserver } from './observe';
export type { Leader } from './observe';
export type { RedlockSettings, RedlockAbortSignal, RedlockResult } from './redlock';
export type { LockOptions, AcquireOptions, TimeoutOptions } from './options';
export { defaultTimeoutOptions } from './options';
export { NotConfirmedError } from './confirm';
export type { ConfirmSetting, ConfirmOptions } from './confirm';
export type { Arg } from './drivers/driver';
export {
  RLockError,
  LockTimeoutError,
  NotOwnedError,
  LockLostError,
  WrongTypeError,
  ModuleNotLoadedError,
  DeadlockError,
  ConnectionError,
  ReplyError,
  ExecutionError,
  ResourceLockedError,
  // redis-semaphore's names for the same classes
  LockLostError as LostLockError,
  LockTimeoutError as TimeoutError,
} from './errors';

import { Session } from './session';

/**
 * Closes the connections rlock opened for `client` (its watchdog holdings end at once). They
 * also close by themselves when the client itself is closed (`quit()`, `close()`, `destroy()`).
 */
export function closeConnections(client: unknown): void {
  Session.close(client);
}
