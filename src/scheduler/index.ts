export { createScheduler, type Scheduler, type ScheduledTask } from './scheduler.js';
